"""The `serc` command groups beyond `ask`, `correct`, `view` and `models` (`serc_dspy.cli`):
`evaluation` (run, eval, report, ...), `compiling` (compile), `bench`; and the argument
types every command shares (`arguments`). The edge layer: nothing below imports it."""
