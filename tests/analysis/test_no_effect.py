""" "No effect" is a claim about the whole run: a strategy whose guards named none of its sources
but whose figures differ from the same sequence's default run took effect, can win, and the
verdict says so. The real-run side (figures equal, claim kept) is in
tests/targets/test_loader.py."""

from __future__ import annotations

from dataclasses import replace

from helpers import sample_run
from recompile_probe.analysis.verdicts import best, eligible, no_effect, verdict

CLAIM = "no effect: matched no source: L['y'] named nothing the compiled frames guard on"


def test_equal_figures_keep_the_claim_and_the_run_cannot_win():
    default = sample_run("default", 3, 10, 50.0)
    idle = replace(sample_run("named", 3, 10, 40.0), no_effect=CLAIM)
    runs = [default, idle]
    assert no_effect(idle, runs) == CLAIM
    assert not eligible(idle, runs)
    assert best(runs) is default
    assert "no effect (matched no source): named" in verdict("rl", runs)


def test_other_figures_than_defaults_are_an_effect():
    default = sample_run("default", 3, 10, 50.0)
    acted = replace(sample_run("named", 1, 12, 40.0), no_effect=CLAIM)
    runs = [default, acted]
    assert no_effect(acted, runs) is None
    assert eligible(acted, runs)
    assert best(runs) is acted
    said = verdict("rl", runs)
    assert "named wins with 1 compile" in said
    assert "no effect (matched no source)" not in said
    assert "named: no guard named its sources, but its figures differ from default's" in said


def test_failed_compiles_alone_are_a_difference():
    default = replace(sample_run("default", 3, 10, 50.0), failed_compiles=0)
    acted = replace(sample_run("named", 3, 10, 40.0), no_effect=CLAIM, failed_compiles=2)
    assert no_effect(acted, [default, acted]) is None


def test_without_a_default_run_the_guards_word_stands():
    idle = replace(sample_run("named", 3, 10, 40.0), no_effect=CLAIM)
    assert no_effect(idle, [idle, sample_run("mark_dynamic", 1, 10, 40.0)]) == CLAIM
