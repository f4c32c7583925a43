"""How LM calls run: the step layer every call goes through (`steps`, `lm_calls`), compiled
prompt states (`states`), concurrency (`concurrency`), throttles (`throttle`), CPU threads
(`cpu`) and the strict JSON adapter (`adapter`). It imports only `serc_dspy.core`."""
