"""Amazon Bedrock's InvokeModel with Anthropic bodies (``protocol.py``), its event-stream frames
(``frames.py``, ``stream.py``) and its errors (``replies.py``)."""
