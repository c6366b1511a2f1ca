"""``loopguard replay``: run a policy offline over recorded conversations, as if each assistant
turn had passed the gateway, and report where it would have acted. This is how an operator tunes
thresholds on their own traffic before enforcing them."""
