"""Configuration: YAML files, env.yaml, CLI overrides, the server-instance graph and secret redaction."""
