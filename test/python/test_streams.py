"""Streams and events: independent branches on their own streams, every dependency
ordered by a stream or an event, event ids reused only when safe."""

from __future__ import annotations

import random

import pytest

import ge
from ge.dialects import task
from ge.dialects.blobs import blob_scope
from ge.ir import run_passes
from ge.lowering.build_model import BuildOptions, build_model, check_model
from ge.lowering.streams import Event, StreamScheduleError, assign_streams, check_schedule
from ge.testing import LIGHT_MODELS, light_model_path, with_random_weights

PIPELINE = "graph-optimize{precision=must_keep_origin_dtype},assign-layouts,eliminate-trans-data,fuse"


def test_chain_stays_on_one_stream():
    preds = [[], [0], [1], [2]]
    s = assign_streams(preds)
    assert s.stream_of == (0, 0, 0, 0) and s.events == () and s.num_streams == 1
    check_schedule(preds, s.stream_of, s.events)


def test_diamond_takes_a_second_stream():
    # 0 -> {1, 2} -> 3: the first consumer continues stream 0, the second takes stream 1
    # after an event, the join waits for it with another; the second reuses the first's id
    # (its wait happened before task 2, its record comes after).
    preds = [[], [0], [0], [1, 2]]
    s = assign_streams(preds)
    assert s.stream_of == (0, 0, 1, 0)
    assert s.events == (Event(0, 0, 2), Event(0, 2, 3)) and s.num_events == 1
    check_schedule(preds, s.stream_of, s.events)
    assert s.ordered(2, 3) and not s.ordered(1, 2) and not s.ordered(2, 1)


def test_idle_stream_is_reused_and_event_ids_recycled():
    # Two diamonds in a row: the second branch reuses stream 1 (its last task is an
    # ancestor) and the events of the first diamond free their ids.
    preds = [[], [0], [0], [1, 2], [3], [3], [4, 5]]
    s = assign_streams(preds)
    assert s.num_streams == 2 and s.stream_of == (0, 0, 1, 0, 0, 1, 0)
    assert len(s.events) == 4 and s.num_events == 1
    check_schedule(preds, s.stream_of, s.events)


def test_events_implied_by_earlier_ones_are_not_inserted():
    # 3 reads 0 (on its own stream) and 1 and 2 (both on stream 1); one event from the
    # later of the two orders both.
    preds = [[], [], [1], [0, 1, 2]]
    s = assign_streams(preds)
    assert s.stream_of == (0, 1, 1, 0)
    assert [(e.src, e.dst) for e in s.events] == [(2, 3)]
    check_schedule(preds, s.stream_of, s.events)


def test_single_stream_and_max_streams():
    preds = [[], [0], [0], [0], [1, 2, 3]]
    one = assign_streams(preds, single_stream=True)
    assert one.stream_of == (0,) * 5 and one.events == () and one.num_streams == 1
    check_schedule(preds, one.stream_of, one.events)
    many = assign_streams(preds)
    assert many.num_streams == 3
    capped = assign_streams(preds, max_streams=2)
    assert capped.num_streams == 2
    check_schedule(preds, capped.stream_of, capped.events)


def test_check_schedule_finds_an_unordered_dependency():
    preds = [[], [0], [0], [1, 2]]
    with pytest.raises(StreamScheduleError, match=r"task 3 \(stream 0\) reads what task 2 \(stream 1\) writes"):
        check_schedule(preds, [0, 0, 1, 0], [Event(0, 0, 2)])
    with pytest.raises(StreamScheduleError, match=r"task 2 \(stream 1\) reads what task 0"):
        check_schedule(preds, [0, 0, 1, 0], [Event(0, 2, 3)])


def test_check_schedule_finds_an_event_reused_too_early():
    # Event 0 is recorded after task 1 for task 3, and again after task 2 (stream 2)
    # before task 3 has surely waited for it.
    preds = [[], [0], [0], [1, 2]]
    stream_of = [0, 1, 2, 0]
    check_schedule(preds, stream_of, [Event(0, 0, 1), Event(1, 0, 2), Event(0, 1, 3), Event(1, 2, 3)])
    with pytest.raises(StreamScheduleError, match="event 0 is recorded again after task 2"):
        check_schedule(preds, stream_of, [Event(0, 0, 1), Event(1, 0, 2), Event(0, 1, 3), Event(0, 2, 3)])


def test_dependency_on_a_later_task_is_refused():
    with pytest.raises(StreamScheduleError, match="depends on task 2, which is not issued before it"):
        assign_streams([[], [2], []])


@pytest.mark.parametrize("seed", range(30))
def test_random_dags_are_scheduled_soundly(seed):
    rng = random.Random(seed)
    preds = []
    for i in range(rng.randrange(5, 60)):
        window = list(range(max(0, i - 6), i))
        preds.append(sorted(rng.sample(window, min(len(window), rng.randrange(0, 4)))))
    for kw in ({}, {"single_stream": True}, {"max_streams": 3}):
        s = assign_streams(preds, **kw)
        check_schedule(preds, s.stream_of, s.events)
        if kw.get("max_streams"):
            assert s.num_streams <= 3
        for i, ps in enumerate(preds):
            assert all(s.ordered(p, i) for p in ps)


# (resnet50's projection shortcuts run inside their blocks' last convs, `SummedConvsFusionPass`:
# a chain of kernels; with that rule off they branch)
MULTI_STREAM = {"inception_v1", "inception_v2", "densenet121", "squeezenet", "shufflenet"}


@pytest.mark.slow
@pytest.mark.parametrize("name, summed", [(n, True) for n in LIGHT_MODELS] + [("resnet50", False)])
def test_light_model_streams(name, summed, tmp_path):
    """Every dependency ordered (from the build's own dependency lists and, independently,
    from the built IR's byte ranges); branching models get more than one stream."""
    pipeline = PIPELINE
    if not summed:
        switch = tmp_path / "switch.txt"
        switch.write_text("SummedConvsFusionPass:off\n")
        pipeline = PIPELINE.removesuffix("fuse") + f'fuse{{switch-file="{switch}"}}'
    with blob_scope():
        module = run_passes(ge.load_onnx(with_random_weights(light_model_path(name), seed=0)), pipeline)
        single = module.clone()
        [r] = build_model(module)
        check_schedule(r.dependencies, r.schedule.stream_of, r.schedule.events)
        model = next(op for op in module.ops if isinstance(op, task.ModelOp))
        check_model(model)
        assert model.streams.value.data == r.schedule.num_streams
        waits = sum(isinstance(op, task.EventWaitOp) for op in model.body.block.ops)
        assert waits == len(r.schedule.events)
        [r1] = build_model(single, BuildOptions(single_stream=True))
        assert r1.schedule.num_streams == 1 and r1.schedule.events == ()
        check_model(next(op for op in single.ops if isinstance(op, task.ModelOp)))
    print(f"\n{name}: {r.schedule.num_streams} streams, {len(r.schedule.events)} events on "
          f"{r.schedule.num_events} ids, {r.launches} launches, {r.copies} copies")
    if name in MULTI_STREAM or not summed:
        assert r.schedule.num_streams > 1
    else:  # alexnet, vgg19, zfnet512: straight chains; resnet50 with its shortcuts summed
        assert r.schedule.num_streams == 1
