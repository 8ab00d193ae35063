"""Digit-free narrative prose for filler sections and noise documents.

Filler pads documents to their token budget the way real reports pad facts with
narrative. It never contains a digit, so it can never state (or appear to state) a
value that answers a question; tests check this.
"""

from __future__ import annotations

import random

_VOCAB = {
    "finance": {
        "topic": (
            "capital allocation|supply chain resilience|pricing discipline|digital transformation|"
            "customer retention|working capital management|cost efficiency|regulatory compliance|"
            "product innovation|brand investment|cybersecurity|talent development|climate risk|"
            "channel partnerships|after-sales service"
        ),
        "actor": (
            "the board|management|the audit committee|our leadership team|the finance function|"
            "our regional teams|the risk committee|independent directors"
        ),
        "stake": (
            "shareholders|customers|employees|suppliers|regulators|local communities|creditors|"
            "partners"
        ),
        "verb": (
            "strengthened|reviewed|expanded|simplified|prioritised|reassessed|accelerated|"
            "monitored|refined|consolidated"
        ),
        "adj": (
            "disciplined|prudent|sustainable|balanced|resilient|measured|long-term|transparent|"
            "focused|steady"
        ),
        "risk": (
            "currency movements|interest rate changes|commodity prices|geopolitical tension|"
            "supplier concentration|litigation|data breaches|changes in tax law|labour shortages|"
            "extreme weather"
        ),
    },
    "education": {
        "topic": (
            "student advising|curriculum renewal|community engagement|research infrastructure|"
            "campus housing|financial aid|online learning|library services|faculty development|"
            "student wellbeing|accreditation|international partnerships|laboratory safety|"
            "career services|alumni relations"
        ),
        "actor": (
            "the board of trustees|the provost|the faculty senate|academic departments|"
            "the student government|the president's cabinet|the office of institutional research|"
            "college deans"
        ),
        "stake": "students|faculty|staff|alumni|families|employers|neighbouring schools|donors",
        "verb": (
            "strengthened|reviewed|expanded|simplified|prioritised|reassessed|accelerated|"
            "monitored|refined|renewed"
        ),
        "adj": (
            "inclusive|rigorous|sustainable|balanced|student-centred|collaborative|long-term|"
            "transparent|focused|steady"
        ),
        "risk": (
            "demographic change|state funding pressure|rising operating costs|"
            "cybersecurity threats|competition for faculty|deferred maintenance|"
            "changes in federal policy|enrollment volatility|extreme weather"
        ),
    },
}
_TEMPLATES = (
    "During the year, {actor} {verb} its approach to {topic}, with particular attention to "
    "{topic2}.",
    "{Actor} believed that a {adj} approach to {topic} serves {stake} best over time.",
    "We continued to engage with {stake} and {stake2} on {topic}, and their feedback shaped our "
    "priorities.",
    "Exposure to {risk} remained a concern, and {actor} {verb} the related controls accordingly.",
    "Progress on {topic} was uneven across units, but the overall direction remained {adj}.",
    "Looking ahead, {actor} expected {topic} and {topic2} to remain central to the strategy "
    "of {name}.",
    "{Actor} regularly discussed {risk} and {risk2}, which could have affected {stake} if left "
    "unaddressed.",
    "A {adj} culture of accountability underpins how {name} approaches {topic}.",
    "Initiatives in {topic} were {verb} after consultation with {stake}.",
    "Feedback from {stake} on {topic} was broadly positive, while views on {topic2} were "
    "more mixed.",
    "{Actor} commissioned an independent review of {topic}, and its recommendations are being "
    "put in place.",
    "Where {risk} threatened continuity, {actor} relied on contingency plans prepared in earlier "
    "periods.",
    "The approach of {name} to {topic} is intended to be {adj} rather than reactive.",
    "Several long-standing practices in {topic} were retired, and the resources were redirected "
    "to {topic2}.",
    "{Actor} reported regularly to {stake} on {topic}, in line with commitments made previously.",
    "In conversations with {stake}, {actor} stressed that {topic} depends on a {adj} culture.",
    "The review of {topic} concluded that existing practices were sound, although several "
    "processes were {verb}.",
    "{Actor} also {verb} the reporting lines for {topic2} to make decisions faster and clearer.",
    "No single factor explains the results; {topic}, {topic2} and {risk} all played a part.",
)
_PARSED: dict[str, dict[str, tuple[str, ...]]] = {
    d: {k: tuple(v.split("|")) for k, v in vocab.items()} for d, vocab in _VOCAB.items()
}


def sentence(rng: random.Random, domain: str, name: str) -> str:
    """One filler sentence about ``name``."""
    v = _PARSED[domain]
    text = rng.choice(_TEMPLATES)
    actor = rng.choice(v["actor"])
    return text.format(
        actor=actor,
        Actor=actor[0].upper() + actor[1:],
        verb=rng.choice(v["verb"]),
        adj=rng.choice(v["adj"]),
        topic=rng.choice(v["topic"]),
        topic2=rng.choice(v["topic"]),
        stake=rng.choice(v["stake"]),
        stake2=rng.choice(v["stake"]),
        risk=rng.choice(v["risk"]),
        risk2=rng.choice(v["risk"]),
        name=name,
    )


def paragraph(rng: random.Random, domain: str, name: str) -> str:
    """A paragraph of four to seven filler sentences."""
    return " ".join(sentence(rng, domain, name) for _ in range(rng.randint(4, 7)))


def has_digit(text: str) -> bool:
    """Whether ``text`` contains any decimal digit (filler must not)."""
    return any(c.isdigit() for c in text)
