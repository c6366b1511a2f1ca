"""The fleet view: what one conversation cannot see but the gateway, which sees every agent, can.

- **Tool health across sessions** (``outcomes``, ``service``): the results of remote tools
  (``gateway/trace/remote.py``) noted per tenant in the shared state (``gateway.state.fleet``); a
  tool failing alike in many sessions is down, audited, counted and shown in the console.
- **Agents are told** (``checks``, ``ladder``): two checks run with the policy's detectors, as
  data in its plan, so the policy's ladder, max_action, shadow mode, messages and veto machinery
  apply to them as to any detector: ``tool_down`` warns a model whose call to a down tool just
  failed and refuses its next retry; ``recalled_loop`` warns a new run that repeats a loop an
  earlier run of the same agent was stopped for.

Pure checks over the trace; the one store round trip per request is ``Fleet.observe``, made only
when the request carries a remote tool's result, a remote failure earlier in the run, or a
repeated call.
"""
