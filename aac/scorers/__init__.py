"""What scores a finished episode's description: the LM judge (against the gold description) and code
match (a coder writes the function from it; its outputs are compared in the sandbox). `aac.eval` and
training's held-out evaluation both score through these, built by `aac.assembly`."""
