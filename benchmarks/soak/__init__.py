"""What survives: many rows, many prompts and verdicts, injected faults, a process killed half way."""
