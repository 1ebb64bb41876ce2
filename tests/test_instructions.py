"""course_llm.instructions: FLAN-style instruction data, answers against plain-Python facts, the held-out
split, bad inputs."""
import re

import pytest

import course_llm.instructions as instructions
import course_llm.sft as sft
from course_llm.chat import render_chat
from course_llm.instructions import INSTRUCTION_TASKS, instruction_data


@pytest.mark.parametrize("name", instructions.__all__)
def test_instruction_names_are_still_importable_from_sft(name):
    assert getattr(sft, name) is getattr(instructions, name)


# independent oracle: real-world facts and string/arithmetic rules written out again here
REAL_CAPITALS = {"France": "Paris", "Italy": "Rome", "Spain": "Madrid", "Germany": "Berlin",
                 "Japan": "Tokyo", "Egypt": "Cairo", "Peru": "Lima", "Kenya": "Nairobi",
                 "Norway": "Oslo", "Greece": "Athens", "Cuba": "Havana", "Chile": "Santiago",
                 "Poland": "Warsaw", "Russia": "Moscow", "China": "Beijing", "Canada": "Ottawa"}
REAL_OPPOSITES = [("hot", "cold"), ("big", "small"), ("up", "down"), ("fast", "slow"), ("happy", "sad"),
                  ("light", "dark"), ("open", "closed"), ("early", "late"), ("full", "empty"),
                  ("old", "new"), ("hard", "soft"), ("rich", "poor"), ("wet", "dry"), ("high", "low"),
                  ("long", "short"), ("loud", "quiet")]


def oracle(task, x):
    if task == "capital":
        return REAL_CAPITALS[x]
    if task == "antonym":
        return dict(REAL_OPPOSITES)[x]
    if task == "reverse":
        return "".join(reversed(x))
    if task == "uppercase":
        return "".join(chr(ord(c) - 32) for c in x)
    if task == "count_letters":
        return str(sum(c.isalpha() for c in x))
    if task == "add":
        return str(x[0] + x[1])
    raise AssertionError(task)


def test_instruction_answers_match_oracle_and_prompts_mention_the_input():
    train, test = instruction_data()
    assert {e["task"] for e in train} == {e["task"] for e in test} == set(INSTRUCTION_TASKS)
    for e in train + test:
        user, assistant = e["messages"]
        assert user["role"] == "user" and assistant["role"] == "assistant"
        assert assistant["content"] == oracle(e["task"], e["input"])
        if e["task"] == "add":
            assert [int(n) for n in re.findall(r"\d+", user["content"])] == list(e["input"])
        else:
            assert re.search(rf"\b{e['input']}\b", user["content"])
        render_chat(e["messages"])                           # valid chat


def test_heldout_split_is_disjoint_from_training():
    train, test = instruction_data(heldout_phrasings=1, heldout_every=4)
    train_prompts = {e["messages"][0]["content"] for e in train}
    assert not train_prompts & {e["messages"][0]["content"] for e in test}
    for task, (inputs, _, phrasings) in INSTRUCTION_TASKS.items():
        fill = lambda p, x: p.format(**({"a": x[0], "b": x[1]} if task == "add" else {"x": x}))
        held_inputs = set(inputs[3::4])                        # every 4th input: indices 3, 7, ...
        tr = [e for e in train if e["task"] == task]
        te = [e for e in test if e["task"] == task]
        # training prompts are exactly the first phrasings filled with the kept inputs
        assert sorted(e["messages"][0]["content"] for e in tr) == sorted(
            fill(p, x) for p in phrasings[:-1] for x in inputs if x not in held_inputs)
        assert not {e["input"] for e in tr} & held_inputs
        assert not {e["messages"][0]["content"] for e in tr} & {fill(phrasings[-1], x) for x in inputs}
        assert len(tr) + len(te) == len(inputs) * len(phrasings)
        expect = {(True, False): "phrasing", (False, True): "input", (True, True): "both"}
        for e in te:
            new_phrasing = e["messages"][0]["content"] == fill(phrasings[-1], e["input"])
            assert e["heldout"] == expect[new_phrasing, e["input"] in held_inputs]
    # no held-out inputs or phrasings: nothing in test
    train0, test0 = instruction_data(heldout_phrasings=0, heldout_every=0)
    assert test0 == [] and len(train0) == len(train) + len(test)
    # the seed only shuffles the training split
    other, _ = instruction_data(seed=1)
    assert other != train and sorted(map(repr, other)) == sorted(map(repr, train))


@pytest.mark.parametrize("kwargs, exc, word", [
    (dict(tasks="capital"), TypeError, "tasks"),
    (dict(tasks=[]), TypeError, "tasks"),
    (dict(tasks=["capitals"]), ValueError, "unknown task"),
    (dict(heldout_phrasings=4), ValueError, "heldout_phrasings"),
    (dict(heldout_phrasings=-1), ValueError, "heldout_phrasings"),
    (dict(heldout_phrasings=1.0), TypeError, "heldout_phrasings"),
    (dict(heldout_every=1), ValueError, "heldout_every"),
    (dict(heldout_every=-2), ValueError, "heldout_every"),
    (dict(heldout_every=0.5), TypeError, "heldout_every"),
    (dict(heldout_every=True), TypeError, "heldout_every"),
    (dict(seed="0"), TypeError, "seed"),
    (dict(seed=True), TypeError, "seed"),
])
def test_instruction_data_rejects_bad_inputs(kwargs, exc, word):
    with pytest.raises(exc, match=word):
        instruction_data(**kwargs)
