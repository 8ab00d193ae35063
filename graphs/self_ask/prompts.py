"""Self-Ask prompts (Press et al. 2023 format), with exemplars written for this project.

Two prompt sets, one per variant (``SelfAskConfig.variant``):

- ``flashrag`` (the default): FlashRAG's ``SelfAskPipeline`` layout. An instruction line,
  exemplars separated by ``#`` lines, each with its evidence as ``Context1: ...`` lines
  before the question; then the retrieved contexts, the question, the "Are follow up
  questions needed here:" line answered in advance (``Yes.`` multi-hop, ``No.``
  single-hop) and the transcript so far. The layout and cues are FlashRAG's; the
  instruction wording and every exemplar are ours (see ``docs/self_ask.md``).
- ``reader``: the project's earlier prompt, where a separate reader answers each follow-up.

The four cue lines are the canonical ones ("Are follow up questions needed here:",
"Follow up:", "Intermediate answer:", "So the final answer is:"). The exemplars mirror
the canonical four kinds (comparison, two-hop chain, computed difference, yes/no) over
invented reports, companies and court cases, the kind of questions asked over long
document collections; no name in them occurs in any corpus we ship. The one-line header
is ours: chat models continue the pattern more reliably when told to. Bump
``PROMPTS_VERSION`` on any edit.
"""

from __future__ import annotations

PROMPTS_VERSION = 2

FOLLOW_UP = "Follow up:"
INTERMEDIATE = "Intermediate answer:"
FINAL = "So the final answer is:"
NEEDED = "Are follow up questions needed here:"

HEADER = """Answer the last question in the same format as the examples. Ask one follow up question at a time; each is answered from the documents."""

EXEMPLARS = """Question: Which opened first, the Ashford paper mill or the Brennan textile mill?
Are follow up questions needed here: Yes.
Follow up: When did the Ashford paper mill open?
Intermediate answer: The Ashford paper mill opened in 1887.
Follow up: When did the Brennan textile mill open?
Intermediate answer: The Brennan textile mill opened in 1902.
So the final answer is: the Ashford paper mill

Question: In which city is the headquarters of the company that acquired Orlin Pharmaceuticals?
Are follow up questions needed here: Yes.
Follow up: Which company acquired Orlin Pharmaceuticals?
Intermediate answer: Orlin Pharmaceuticals was acquired by Tessaly Health.
Follow up: In which city is Tessaly Health headquartered?
Intermediate answer: Tessaly Health is headquartered in Rotterdam.
So the final answer is: Rotterdam

Question: By how much did Corvane Energy's net profit change from 2022 to 2023?
Are follow up questions needed here: Yes.
Follow up: What was Corvane Energy's net profit in 2022?
Intermediate answer: Corvane Energy's net profit in 2022 was 41 million euros.
Follow up: What was Corvane Energy's net profit in 2023?
Intermediate answer: Corvane Energy's net profit in 2023 was 56 million euros.
So the final answer is: it rose by 15 million euros

Question: Did the court that heard Delmore v. Quayle rule for the plaintiff?
Are follow up questions needed here: Yes.
Follow up: Which court heard Delmore v. Quayle?
Intermediate answer: Delmore v. Quayle was heard by the Northern District Commercial Court.
Follow up: How did the Northern District Commercial Court rule in Delmore v. Quayle?
Intermediate answer: The court dismissed all of the plaintiff's claims.
So the final answer is: No"""

#: ``{format_note}`` is empty, or the benchmark's output-format instruction for the final answer.
SELF_ASK_TEMPLATE = """{header}{format_note}

{exemplars}

Question: {question}
Are follow up questions needed here:{scratchpad}"""

FORMAT_NOTE = """ Write the final answer after "So the final answer is:" and follow this format in it: {instruction}"""

#: The reader that answers one follow-up from the chunks retrieved for it (``longctx.graphs.prompts.RAG_TEMPLATE``'s instruction).
FOLLOW_UP_INSTRUCTION = """Answer in one short sentence using only the text above. If the text does not say, write: The text does not say."""


# -- flashrag variant ------------------------------------------------------------------
#: FlashRAG's exemplar separator; also one of its stop sequences.
EXEMPLAR_SEPARATOR = "#"
#: FlashRAG's third stop sequence (a model starting a new context block).
CONTEXT_STOP = "Context:"

FLASHRAG_HEADER = """Answer the question using the contexts given before it. When it takes more than one step, ask follow up questions one at a time and give an intermediate answer to each; when it does not, answer it directly."""

#: Multi-hop exemplars (FlashRAG ``SELF_ASK_PROMPT_MULTI_HOP``'s shape: contexts, ``Yes.``, follow-ups).
MULTI_HOP_EXEMPLARS = (
    """Context1: The Ashford paper mill opened in 1887 on the east bank of the Lenne.
Context2: Production at the Brennan textile mill began in 1902 with four hundred looms.
Question: Which opened first, the Ashford paper mill or the Brennan textile mill?
Are follow up questions needed here: Yes.
Follow up: When did the Ashford paper mill open?
Intermediate answer: The Ashford paper mill opened in 1887.
Follow up: When did the Brennan textile mill open?
Intermediate answer: The Brennan textile mill opened in 1902.
So the final answer is: the Ashford paper mill""",
    """Context1: In March 2019 Tessaly Health completed its acquisition of Orlin Pharmaceuticals.
Context2: Tessaly Health moved its headquarters to Rotterdam in 2011.
Question: In which city is the headquarters of the company that acquired Orlin Pharmaceuticals?
Are follow up questions needed here: Yes.
Follow up: Which company acquired Orlin Pharmaceuticals?
Intermediate answer: Orlin Pharmaceuticals was acquired by Tessaly Health.
Follow up: In which city is Tessaly Health headquartered?
Intermediate answer: Tessaly Health is headquartered in Rotterdam.
So the final answer is: Rotterdam""",
    """Context1: Corvane Energy reported a net profit of 41 million euros for 2022.
Context2: For 2023 Corvane Energy's net profit reached 56 million euros, helped by lower gas prices.
Question: By how much did Corvane Energy's net profit change from 2022 to 2023?
Are follow up questions needed here: Yes.
Follow up: What was Corvane Energy's net profit in 2022?
Intermediate answer: Corvane Energy's net profit in 2022 was 41 million euros.
Follow up: What was Corvane Energy's net profit in 2023?
Intermediate answer: Corvane Energy's net profit in 2023 was 56 million euros.
So the final answer is: it rose by 15 million euros""",
    """Context1: Delmore v. Quayle was filed before the Northern District Commercial Court in 2017.
Context2: The Northern District Commercial Court dismissed all of the plaintiff's claims in Delmore v. Quayle.
Question: Did the court that heard Delmore v. Quayle rule for the plaintiff?
Are follow up questions needed here: Yes.
Follow up: Which court heard Delmore v. Quayle?
Intermediate answer: Delmore v. Quayle was heard by the Northern District Commercial Court.
Follow up: How did the Northern District Commercial Court rule in Delmore v. Quayle?
Intermediate answer: The court dismissed all of the plaintiff's claims.
So the final answer is: No""",
)

#: Single-hop exemplars (FlashRAG ``SELF_ASK_PROMPT_SINGLE_HOP``'s shape: one context, ``No.``, the answer).
SINGLE_HOP_EXEMPLARS = (
    """Context1: The Ashford paper mill opened in 1887 on the east bank of the Lenne.
Question: When did the Ashford paper mill open?
Are follow up questions needed here: No.
So the final answer is: 1887""",
    """Context1: Tessaly Health moved its headquarters to Rotterdam in 2011.
Question: Where is Tessaly Health headquartered?
Are follow up questions needed here: No.
So the final answer is: Rotterdam""",
    """Context1: For 2023 Corvane Energy's net profit reached 56 million euros, helped by lower gas prices.
Question: What was Corvane Energy's net profit in 2023?
Are follow up questions needed here: No.
So the final answer is: 56 million euros""",
    """Context1: The Northern District Commercial Court dismissed all of the plaintiff's claims in Delmore v. Quayle.
Question: Did the plaintiff win Delmore v. Quayle?
Are follow up questions needed here: No.
So the final answer is: No""",
)
