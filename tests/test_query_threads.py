"""A query is embedded on one torch thread; the thread count is put back, the vector is the same."""

from __future__ import annotations

import threading

import numpy as np


def test_one_text_runs_on_one_thread_and_restores_the_count(embedder) -> None:
    import torch

    texts = ["When did I last go hiking?", "I went hiking with Anna.", "We cooked pasta.",
             "The train was late.", "My sister called.", "I fixed the tap."]
    batch = embedder.embed(texts)  # six texts: the process's thread count
    before = torch.get_num_threads()
    seen: list[int] = []
    model = embedder._loaded_model()
    original = model.encode

    def spy(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return original(*args, **kwargs)

    model.encode = spy
    try:
        one = embedder.embed(texts[:1])
        embedder.embed(texts)
    finally:
        del model.encode
    assert seen == [1, before] and torch.get_num_threads() == before
    assert np.allclose(one[0], batch[0], atol=1e-5)


def test_queries_from_threads_leave_the_count_as_it_was(embedder) -> None:
    import torch

    before = torch.get_num_threads()
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for j in range(5):
                embedder.embed([f"question {i} {j}"])
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and torch.get_num_threads() == before
