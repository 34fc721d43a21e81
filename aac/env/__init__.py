"""The environment: PAU instances and their schema, the three-phase protocol and its prompts, the
skyrl-gym adapter. It calls functions through `aac.sandbox` and knows no model and no reward."""
