"""The words on each page of the demo web: topic words at the page's density, with noise.

Noise runs both ways on purpose: on-topic pages carry filler and other themes' words, and a
few off-topic pages borrow the demo topic's words, so no single word decides a page's label.
"""

from __future__ import annotations

from focuscrawl.demo import vocabulary as V
from focuscrawl.demo.site_plan import Page, SitePlan


def write_text(plan: SitePlan, pages: list[Page] | None = None) -> None:
    """Write every page's words, or only ``pages``' (a part added later)."""
    for page in plan.pages.values() if pages is None else pages:
        if page.kind == "syndicated":
            continue  # shares the original's paragraphs
        n = {"home": 2, "about": 2, "hub": 2}.get(page.kind, plan.rng.randint(4, 7))
        page.paragraphs = [_paragraph(plan, page) for _ in range(n)]
    for copy, original, kind in plan.duplicates:
        if kind == "near":
            plan.pages[copy].paragraphs = plan.pages[original].paragraphs


def _paragraph(plan: SitePlan, page: Page) -> str:
    rng = plan.rng
    if page.theme is None:
        theme_pool: list[str] = []
    elif page.subtopics:
        theme_pool = [w for s in page.subtopics for w in V.THEMES[page.theme]["subtopics"][s].split()]
    else:
        theme_pool = plan.theme_words[page.theme]
    # windows-1252 cannot encode every accented name (ř), so that host draws only from those it can;
    # nor can a PDF's standard font (WinAnsiEncoding is windows-1252), which would print "?"
    cp1252 = plan.profile(page.host).charset == "windows-1252" or page.kind == "document"
    accented = V.ACCENTED_1252 if cp1252 else V.ACCENTED
    noise_themes = sorted(V.THEMES)
    sentences = []
    for _ in range(rng.randint(3, 5)):
        words = []
        for _ in range(rng.randint(8, 16)):
            r = rng.random()
            if rng.random() < page.mention:
                words.append(rng.choice(plan.theme_words[plan.topic]))
            elif theme_pool and r < page.topic_density:
                pool = theme_pool if rng.random() < 0.8 else plan.theme_words[page.theme]
                words.append(rng.choice(pool))
            elif r < page.topic_density + 0.04 or (not theme_pool and r < 0.25):
                words.append(rng.choice(plan.theme_words[rng.choice(noise_themes)]))
            elif r < page.topic_density + 0.06:
                words.append(rng.choice(accented))
            else:
                words.append(rng.choice(V.FILLER))
        sentence = " ".join(words)
        sentences.append(sentence[0].upper() + sentence[1:] + ".")
    return " ".join(sentences)
