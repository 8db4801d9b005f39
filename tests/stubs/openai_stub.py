"""The scripted OpenAI-compatible upstream lives in :mod:`rewardgym.testing.scripted_model`; this name
stays for the tests and benchmarks that start it as ``python -m tests.stubs.openai_stub``."""

from rewardgym.testing.scripted_model import OpenAIStub, StubState, main, start_stub

__all__ = ["OpenAIStub", "StubState", "main", "start_stub"]

if __name__ == "__main__":
    main()
