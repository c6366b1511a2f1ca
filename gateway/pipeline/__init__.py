"""The pipeline every guarded route runs, whatever the protocol (one adapter per protocol).

One :class:`~gateway.pipeline.exchange.Exchange` per request is passed from stage to stage:

    route.Guarded(adapter, gateway) read the body, parse it, run the stages below
      request.judge                 plan: judge the executed history, edit what the model sees
      terminate.at_request          ... or end the run when it already crossed terminate (answer:
                                    the model's final answer, tools closed; or the template)
      (send to the upstream)
      unary.respond / stream.respond  the reply: judge proposed calls (judging), veto and
                                    re-ask in a loop (vetoes, reask), end the run (terminate),
                                    a turn's required tool (expect)
    verdict                         the strongest action taken: audit events, response headers
    timing                          overhead vs upstream time, the request log line, metrics

Only ``gateway.protocols.*`` knows a wire format; stages call the adapter for every read and
edit of a body. Fail-open everywhere: a guard error forwards the traffic untouched.
"""
