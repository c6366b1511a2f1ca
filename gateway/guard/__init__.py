"""The loop guard proper: judge a request's history and a response's proposed calls.

Detectors decide nothing and the policy engine only returns actions; this package turns those
actions into one plan per request, which the chat route applies through the protocol adapter.
"""
