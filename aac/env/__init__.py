"""The environment: PAU instances, the sandbox that calls untrusted functions, the protocol."""
