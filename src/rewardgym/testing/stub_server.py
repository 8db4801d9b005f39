"""``python -m rewardgym.testing.stub_server --port P [--mode M] [--text T] [--no-record]``: the scripted
OpenAI-compatible upstream (:mod:`rewardgym.testing.scripted_model`) as its own process — for a model server
under test that must reach a real upstream URL. To run an environment without any model, use the ``scripted``
model type instead (``gym eval run --model-type scripted``, :mod:`rewardgym.models.scripted`): it answers in
the model server's own process.

A module of its own so that ``python -m`` runs it without the package having imported it first (running
``rewardgym.testing.scripted_model`` itself made Python warn about exactly that).
"""

from __future__ import annotations

from rewardgym.testing.scripted_model import main

if __name__ == "__main__":
    main()
