"""The outbound HTTP client every server (and the collector) uses to call peers and upstreams.

Layout (one job per module):
- ``client``  — :class:`~rewardgym.http.client.HttpClient`: pooled, timed out, retried a bounded number
  of times; ``reply`` — :class:`~rewardgym.http.reply.HttpReply` and the reply decoding both transports
  share; ``config`` — its ``http:`` config block;
- ``h1pool`` / ``h1conn`` — the lean keep-alive HTTP/1.1 transport of plain ``http://`` URLs;
  ``local`` — the same requests to a server hosted by this process, without a socket (``colocate``);
- ``retry``   — the one retry timing (full-jitter backoff, ``Retry-After``), also the collector's;
- ``errors``  — the ``Upstream*`` errors of a failed call and the error ``type`` names servers answer.

This package sits below the server framework: it never imports ``rewardgym.servers``.
"""
