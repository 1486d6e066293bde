"""The whole-file edit format's reader of replies: named, nameless and sectioned fenced blocks.

The replies marked "verbatim" are Qwen2.5-Coder 0.5B's own, from bench/tasks/ prompts.
"""

from __future__ import annotations

from robotlab.to.child.file_replies import FileBlock, file_blocks, read_reply

SLICING = '''"""Take items from the front of a list."""


def first_n(items, n):
    """The first ``n`` items of ``items`` (all of them when there are fewer)."""
    return items[: n - 1]
'''
TESTS = ("from slicing import first_n\n\n\ndef test_first_two():\n"
         "    assert first_n([1, 2, 3, 4], 2) == [1, 2]\n")
PROJECT = {"slicing.py": SLICING, "test_slicing.py": TESTS}
FIXED = SLICING.replace("n - 1", "n")


def test_a_block_under_its_name_is_that_file() -> None:
    reply = f"slicing.py\n```python\n{FIXED}```\n"

    assert file_blocks(reply, PROJECT) == [FileBlock("slicing.py", FIXED, named=True)]


def test_a_nameless_block_is_the_file_it_most_resembles() -> None:
    reply = f"Here is the fix:\n\n```python\n{FIXED}```\n\nThis returns n items."

    assert file_blocks(reply, PROJECT) == [FileBlock("slicing.py", FIXED, named=False)]


def test_a_nameless_block_like_no_file_is_dropped() -> None:
    reply = "Try this:\n```python\nprint('hello world, this is entirely new')\n```"

    assert file_blocks(reply, PROJECT) == []


def test_a_block_equal_to_its_file_is_no_change() -> None:
    # verbatim: the model echoed the file it was asked to fix
    reply = f"slicing.py\n```\n{SLICING}```"

    assert file_blocks(reply, PROJECT) == []


def test_one_block_of_several_commented_files_is_one_write_each() -> None:
    geometry = ('"""Areas of shapes."""\n\n\ndef area_of(width, height):\n'
                '    return width * height\n')
    report = ("from geometry import area_of\n\n\ndef describe(w, h):\n"
              "    return f'area: {area_of(w, h)}'\n")
    # verbatim shape: both files in one python block, each after a "# name.py" line
    reply = ("```python\n# geometry.py\ndef rectangle_area(width, height):\n"
             "    return width * height\n\n# report.py\nfrom geometry import rectangle_area\n\n\n"
             "def describe(w, h):\n    return f'area: {rectangle_area(w, h)}'\n```")

    blocks = file_blocks(reply, {"geometry.py": geometry, "report.py": report})

    assert [block.path for block in blocks] == ["geometry.py", "report.py"]
    assert blocks[0].content.startswith("def rectangle_area(width, height):")
    assert blocks[1].content.startswith("from geometry import rectangle_area")


def test_a_python_file_loses_an_import_of_itself() -> None:
    textutil = '"""Small text helpers."""\n\n\ndef shout(text):\n    return text.upper() + "!"\n'
    # verbatim: the test's import line copied into the module it imports from
    reply = ('```python\nfrom textutil import whisper\n\n"""Small text helpers."""\n\n\n'
             'def shout(text):\n    return text.upper() + "!"\n\n\ndef whisper(text):\n'
             '    return text.lower() + "..."\n```')

    (block,) = file_blocks(reply, {"textutil.py": textutil,
                                   "test_textutil.py": "from textutil import whisper\n"})

    assert block.path == "textutil.py"
    assert "import" not in block.content and "def whisper(text):" in block.content


def test_a_json_block_under_its_name_is_a_file_and_shell_blocks_never_are() -> None:
    settings = '{\n  "timeout_seconds": 15\n}\n'
    reply = ('Run:\n```bash\npytest -q\n```\nsettings.json\n```json\n{\n  "timeout_seconds": 30\n'
             '}\n```')

    assert file_blocks(reply, {"settings.json": settings}) == [
        FileBlock("settings.json", '{\n  "timeout_seconds": 30\n}\n', named=True)]


def test_a_name_with_a_folder_in_front_is_the_project_file_of_that_name() -> None:
    reply = f"### src/slicing.py\n```python\n{FIXED}```"

    assert [block.path for block in file_blocks(reply, PROJECT)] == ["slicing.py"]


def test_a_named_new_file_is_kept_and_the_last_block_for_a_file_wins() -> None:
    reply = "`notes.txt`\n```\nfirst\n```\n`notes.txt`\n```\nsecond\n```"

    assert file_blocks(reply, PROJECT) == [FileBlock("notes.txt", "second\n", named=True)]


def test_a_name_on_the_blocks_first_line_names_it_and_an_empty_block_is_nothing() -> None:
    # verbatim shape: "```" then the file's name as the block's first line
    reply = f"```\nslicing.py\n```\n```python\nslicing.py\n{FIXED}```"

    assert file_blocks(reply, PROJECT) == [FileBlock("slicing.py", FIXED, named=True)]


def test_a_stray_fence_does_not_swallow_the_next_named_file() -> None:
    # verbatim shape: an unclosed block, then the file's name, then a fence with a language
    reply = (f"```\n{TESTS}```\n\nslicing.py\n```python\n{FIXED}```\n\nThis should fix it.")
    tests_only = {"slicing.py": SLICING, "test_slicing.py": TESTS}

    blocks = file_blocks(reply, tests_only)

    assert blocks == [FileBlock("slicing.py", FIXED, named=True)]


def test_a_rewrite_keeps_a_dropped_definition_another_file_still_names() -> None:
    textutil = 'def shout(text):\n    return text.upper() + "!"\n'
    tests = "from textutil import shout, whisper\n"
    reply = 'textutil.py\n```python\ndef whisper(text):\n    return text.lower() + "..."\n```'

    (block,) = file_blocks(reply, {"textutil.py": textutil, "test_textutil.py": tests})

    assert block.content == ('def shout(text):\n    return text.upper() + "!"\n\n\n'
                             'def whisper(text):\n    return text.lower() + "..."\n')


def test_a_rename_written_in_every_file_drops_the_old_name() -> None:
    geometry = "def area_of(w, h):\n    return w * h\n"
    report = "from geometry import area_of\n\nX = area_of(1, 2)\n"
    reply = ("geometry.py\n```python\ndef rectangle_area(w, h):\n    return w * h\n```\n"
             "report.py\n```python\nfrom geometry import rectangle_area\n\n"
             "X = rectangle_area(1, 2)\n```")
    half = "geometry.py\n```python\ndef rectangle_area(w, h):\n    return w * h\n```"
    files = {"geometry.py": geometry, "report.py": report}

    whole = {block.path: block.content for block in file_blocks(reply, files)}
    (partial,) = file_blocks(half, files)

    assert "area_of" not in whole["geometry.py"]
    assert "def area_of" in partial.content and "def rectangle_area" in partial.content


def test_an_echo_that_only_moved_blank_lines_is_no_change() -> None:
    # verbatim shape: the file repeated with one blank line fewer between its parts
    reply = "slicing.py\n```\n" + SLICING.replace("\n\n\ndef", "\n\ndef") + "```"

    assert file_blocks(reply, PROJECT) == []


TEXTUTIL = ('"""Small text helpers."""\n\n\ndef shout(text):\n'
            '    """The text in upper case followed by "!"."""\n    return text.upper() + "!"\n')
TEXTUTIL_TESTS = ('from textutil import shout, whisper\n\n\ndef test_shout():\n'
                  '    assert shout("hello") == "HELLO!"\n\n\ndef test_whisper():\n'
                  '    assert whisper("HELLO There") == "hello there..."\n')


def test_a_block_named_after_the_test_but_holding_the_module_is_the_module() -> None:
    # verbatim: the test file's name on the block's first line, the rewritten module below it
    reply = ('```\ntest_textutil.py\n"""\nSmall text helpers."""\n\ndef shout(text):\n'
             '    """The text in upper case followed by "!"."""\n    return text.upper() + "!"\n\n'
             'def whisper(text):\n    """The text in lower case followed by "...". """\n'
             '    return text.lower() + "..."\n```')

    (block,) = file_blocks(reply, {"test_textutil.py": TEXTUTIL_TESTS, "textutil.py": TEXTUTIL})

    assert block.path == "textutil.py" and not block.named
    assert block.content.endswith('def whisper(text):\n    """The text in lower case followed by '
                                  '"...". """\n    return text.lower() + "..."\n')


def test_a_block_named_after_the_test_and_holding_the_test_stays_the_test() -> None:
    reply = f"test_textutil.py\n```\n{TEXTUTIL_TESTS.replace('HELLO!', 'HELLO')}```"

    (block,) = file_blocks(reply, {"test_textutil.py": TEXTUTIL_TESTS, "textutil.py": TEXTUTIL})

    assert block.path == "test_textutil.py" and block.named


def test_a_fence_holding_only_a_name_names_the_text_after_it() -> None:
    stats = ('"""Averages."""\n\n\ndef mean(values):\n    """The arithmetic mean of ``values``.\n\n'
             '    >>> mean([1, 2])\n    1.5\n    >>> mean([1, 2, 3, 4])\n    2\n    """\n'
             '    return sum(values) / len(values)\n')
    # verbatim: "```", the name, "```", then the file unfenced up to a closing fence
    reply = ('```\nstats.py\n```\n"""\nAverages.\n\nThe arithmetic mean of ``values``.\n\n'
             '>>> mean([1, 2])\n1.5\n>>> mean([1, 2, 3, 4])\n2\n"""\n\ndef mean(values):\n'
             '    """The arithmetic mean of ``values``.\n\n    >>> mean([1, 2, 3, 4])\n    2\n'
             '    """\n    return sum(values) / len(values)\n```')

    (block,) = file_blocks(reply, {"stats.py": stats})

    assert block.path == "stats.py" and block.named
    assert block.content.startswith('"""\nAverages.\n') and block.content.endswith(
        "return sum(values) / len(values)\n")


def test_a_rename_whose_test_asserts_the_old_name_is_gone_drops_it() -> None:
    geometry = ('"""Areas of shapes."""\n\n\ndef area_of(width, height):\n'
                '    """The area of a width x height rectangle."""\n    return width * height\n')
    report = ('"""One line about a rectangle."""\n\nfrom geometry import area_of\n\n\n'
              'def describe(width, height):\n    """A line naming the rectangle\'s area."""\n'
              '    return f"area: {area_of(width, height)}"\n')
    tests = ('import geometry\nfrom report import describe\n\n\ndef test_the_new_name():\n'
             '    assert geometry.rectangle_area(2, 3) == 6\n'
             '    assert not hasattr(geometry, "area_of")\n')
    # verbatim: a stray test block first, then both files renamed
    reply = ('```python\nfrom geometry import rectangle_area\n\ndef test_rectangle_area():\n'
             '    assert rectangle_area(2, 3) == 6\n```\n\ngeometry.py\n```python\n'
             '"""Areas of shapes."""\n\ndef rectangle_area(width, height):\n'
             '    """The area of a width x height rectangle."""\n    return width * height\n```\n\n'
             'report.py\n```python\n"""One line about a rectangle."""\n\n'
             'from geometry import rectangle_area\n\ndef describe(width, height):\n'
             '    """A line naming the rectangle\'s area."""\n'
             '    return f"area: {rectangle_area(width, height)}"\n```')

    written = {block.path: block.content
               for block in file_blocks(reply, {"geometry.py": geometry, "report.py": report,
                                                "test_report.py": tests})}

    assert "area_of" not in written["geometry.py"]
    assert "def rectangle_area" in written["geometry.py"]
    assert "area_of" not in written["report.py"]


def test_a_block_copying_the_verify_output_is_no_file_even_under_a_files_name() -> None:
    stats = ('"""Averages."""\n\n\ndef mean(values):\n    """The arithmetic mean of ``values``.\n\n'
             '    >>> mean([1, 2])\n    1.5\n    >>> mean([1, 2, 3, 4])\n    2\n    """\n'
             '    return sum(values) / len(values)\n')
    output = ('*' * 70 + '\nFile "/tmp/doctest/stats.py", line 9, in stats.mean\nFailed example:\n'
              '    mean([1, 2, 3, 4])\nExpected:\n    2\nGot:\n    2.5\n' + '*' * 70
              + '\n1 items had failures:\n   1 of   2 in stats.mean\n'
              '***Test Failed*** 1 failures.')
    # verbatim shape: the module, then the failure pasted under the verify command's line (which
    # names stats.py)
    reply = ('stats.py\n```\n"""Averages."""\nimport statistics\n\ndef mean(values):\n'
             '    """The arithmetic mean of ``values``.\n\n    >>> mean([1, 2])\n    1.5\n'
             '    >>> mean([1, 2, 3, 4])\n    2\n    """\n    return statistics.mean(values)\n```\n'
             '\npython -m doctest stats.py\n```\n******\n'
             'File "/tmp/doctest/stats.py", line 9, in stats.mean\nFailed example:\n'
             '    mean([1, 2, 3, 4])\nExpected:\n    2\nGot:\n    2.5\n******\n'
             '1 items had failures:\n   1 of   2 in stats.mean\n***Test Failed*** 1 failures.\n```')

    (block,) = read_reply(reply, {"stats.py": stats}, [output])[0]
    (pasted,) = file_blocks(reply, {"stats.py": stats})

    assert block.path == "stats.py" and block.content.startswith(
        '"""Averages."""\nimport statistics\n')
    assert pasted.content.startswith("******")  # without the output shown, the last block would win
