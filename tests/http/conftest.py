from tests.stubs.fixtures import serve, stub

__all__ = ["serve", "stub"]
