"""HTTP pieces the pipeline and the server share: request bodies, responses, the answers the
gateway gives without asking the upstream. Below both: neither imports the other through here."""
