"""The explorers' frames cache (tools/pagebuild.py, build/frames) keeps one
entry per lesson and edition: the English and the Chinese lesson of the same
name do not evict each other."""

from tools import pagebuild


def test_english_and_chinese_frames_live_side_by_side(tmp_path, monkeypatch):
    monkeypatch.setattr(pagebuild, "FRAMES", tmp_path / "frames")
    en = tmp_path / "notebooks" / "04_x.ipynb"
    zh = tmp_path / "notebooks" / "zh" / "04_x.ipynb"
    monkeypatch.setattr(pagebuild, "NOTEBOOKS", en.parent)
    for path, text in ((en, "english"), (zh, "chinese")):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    pagebuild.store_frames(en, {"lang": "en"})
    pagebuild.store_frames(zh, {"lang": "zh"})
    assert pagebuild.cached_frames(en) == {"lang": "en"}
    assert pagebuild.cached_frames(zh) == {"lang": "zh"}


def test_a_changed_lesson_replaces_its_own_frames(tmp_path, monkeypatch):
    monkeypatch.setattr(pagebuild, "FRAMES", tmp_path / "frames")
    monkeypatch.setattr(pagebuild, "NOTEBOOKS", tmp_path)
    lesson = tmp_path / "04_x.ipynb"
    lesson.write_text("first")
    pagebuild.store_frames(lesson, {"run": 1})
    lesson.write_text("second")
    assert pagebuild.cached_frames(lesson) is None  # keyed by the file's hash
    pagebuild.store_frames(lesson, {"run": 2})
    assert pagebuild.cached_frames(lesson) == {"run": 2}
    assert len(list((tmp_path / "frames").glob("*.json"))) == 1
