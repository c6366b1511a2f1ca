"""The loop guard proper: judge a request's history and a response's proposed calls.

Detectors decide nothing and the policy engine only returns actions; this package turns those
actions into one plan per request and one decision per judged reply, which the front ends (the
gateway's pipeline, the LiteLLM guardrail) apply through the protocol adapter. Who owns what:

- the guard builds each plan and decision, frozen; a change is a new plan (``plan``), which the
  front end sets in the old one's place: nothing else edits them;
- the guard is the one layer that reaches the state store (``store``): the front ends hold it
  only to hand it here, or to a protocol's server-kept history;
- what a decision makes of a unary reply (relay, keep calls, re-ask, terminate) is one loop
  (``settle``) that both front ends run with their own reading and writing of replies.
"""
