"""Trainer adapters of the curriculum: a trainer asks them for its next prompts and reports its rewards.

Layout: ``source`` — the two calls an adapter makes of a curriculum (:class:`BatchSource`,
:class:`GroupReporter`) and how per-completion rewards become per-group reports; ``sampler`` — a plain
``torch.utils.data.Sampler`` and ``IterableDataset`` for any loop; ``verl`` — veRL's curriculum sampler
(``data.sampler.class_path``); ``trl`` — a ``GRPOTrainer`` whose prompts come from the curriculum;
``client`` — ``gym curriculum serve`` over HTTP, usable wherever an in-process curriculum is.

Importing this package imports nothing heavy: ``sampler`` needs torch, ``verl`` veRL, ``trl`` TRL (the
``rewardgym[train]`` extra), each only when that module is imported. docs/curriculum.md, "Trainers".
"""
