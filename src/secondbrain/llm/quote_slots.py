"""What a question asks for, as the quoting provider reads it (see `secondbrain.llm.extractive`): its slot.

"What colour is the kitchen wall painted?" asks for a colour, "How much does the flat cost?" for an amount of money,
"What was my time in the half marathon?" for a time. A sentence that holds a value of that kind answers the question;
one that only shares its words ("Seven nights in May, staying in a flat near the castle") is context. The slot is read
from the question's own words, first match wins, in this order:

- colour: "what/which colour" (color, shade): a colour word (white, off-white, green, pale grey ...);
- temperature: "temperature", "how hot/warm/cold", "how many degrees": a figure in degrees (250 °C, 38°);
- time: "what time", "what ... time" (my time, the time): a clock time or a time in figures (10:40, 2:03:51,
  45 minutes), not a pace (5:40 per kilometre);
- duration: "how long", "how much time": a span (45 minutes, five hours, two weeks, 1:30);
- date: "when is/did/...", "what/which day" (date, month, year, week): a day or month the text names (8 November,
  next Tuesday, 2026-10-06, spring 2027); asked in the past ("when did ..."), also a statement its note or dated
  heading dates;
- money: "cost", "price", "how much ... pay/spend/charge": a figure where money is named (820 euros, €95, "of which
  the flat is 820" after "1,600 euros");
- count: "how many": a figure or a number word (6, three, a dozen);
- frequency: "how often": once, twice, every ..., daily, a week;
- measure: "how thick" (thin, wide, tall, high, deep, far, big, heavy, large), "what size": a figure with a unit
  (200 mm, 4.1 kWp, 16 km, 1.4 bar);
- amount: "how much" (anything else): a figure (350 g, 50%, 820);
- person: "who", "whom", "whose": a name (Rui, Dona Lurdes).

The words that name the slot ("colour", "cost", "temperature") are its cues: a statement holding the value is taken to
say them, so "the wall is now Oat Milk, a warm off-white" answers "what colour" as fully as "colour Chalk White" does,
and the later of the two is the newest statement of the fact.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from secondbrain.date_sources import MONTH_NAMES

COLOUR, TEMPERATURE, TIME, DURATION, DATE, MONEY, COUNT, FREQUENCY, MEASURE, AMOUNT, PERSON = (
    "colour", "temperature", "time", "duration", "date", "money", "count", "frequency", "measure", "amount", "person",
)  # fmt: skip


@dataclass(frozen=True)
class Slot:
    """What the question asks for: the slot's kind, the question's words that name it (its cues), and for a date
    asked in the past tense, whether a statement's own day (its note's or heading's) answers it too."""

    kind: str
    cues: frozenset[str] = frozenset()
    dated_answers: bool = False


_I = re.IGNORECASE
# A clause starts here: the question's start, or after punctuation or a joining word ("..., or when was it done?").
_CLAUSE = r"(?:^|[,;:.?!(]\s*|\b(?:and|or|so|but|then|also)\s+)\W*"
# How each slot is asked for, in the order they are tried, with the cue words each names.
_ASKED: list[tuple[str, re.Pattern[str], tuple[str, ...]]] = [
    (COLOUR, re.compile(r"\b(?:what|which)\s+(?:\w+\s+)?(?:colou?rs?|shades?)\b|\bcolou?r\s+is\b", _I),
     ("colour", "color", "colours", "colors", "shade")),
    (TEMPERATURE, re.compile(r"\btemperatures?\b|\bhow\s+(?:hot|warm|cold)\b|\bhow\s+many\s+degrees\b", _I),
     ("temperature", "hot", "warm", "cold", "degrees")),
    (TIME, re.compile(r"\bwhat\s+(?:\w+\s+){0,2}time\b(?!\s*(?:of|zone))|\bat\s+what\s+time\b", _I), ("time",)),
    (DURATION, re.compile(r"\bhow\s+long\b|\bhow\s+much\s+time\b|\bhow\s+many\s+(?:minutes|hours|days|weeks)\b", _I),
     ("long", "time", "minutes", "hours", "days", "weeks")),
    (DATE, re.compile(_CLAUSE + r"when(?:'s|\s+(?:is|are|was|were|did|do|does|will|would|should|shall|can|could|"
                      r"has|have|had|am|must)\b|\W*$)|\b(?:what|which)\s+(?:day|date|month|year|week)\b|"
                      r"\bby\s+when\b", _I),
     ("day", "date", "month", "year", "week")),
    (MONEY, re.compile(r"\bcost(?:s|ing)?\b|\bprices?\b|\bhow\s+expensive\b|\bwhat\s+(?:\w+\s+)?(?:fee|charge)\b|"
                       r"\bhow\s+much\b.*\b(?:pay(?:s|ing)?|paid|spen[dt]|charged?|fee|owe|budget(?:ed)?)\b", _I),
     ("cost", "costs", "costing", "price", "prices", "pay", "pays", "paying", "paid", "spend", "spent", "charge",
      "charged", "fee", "expensive")),
    (COUNT, re.compile(r"\bhow\s+many\b|\bwhat\s+number\s+of\b", _I), ()),
    (FREQUENCY, re.compile(r"\bhow\s+often\b|\bhow\s+frequently\b", _I), ("often", "frequently")),
    (MEASURE, re.compile(r"\bhow\s+(?:thick|thin|wide|tall|high|deep|far|big|large|heavy|small|strong)\b|"
                         r"\bwhat\s+size\b", _I),
     ("thick", "thin", "wide", "tall", "high", "deep", "far", "big", "large", "heavy", "small", "size")),
    (AMOUNT, re.compile(r"\bhow\s+much\b", _I), ()),
    (PERSON, re.compile(_CLAUSE + r"(?:who|whom|whose)\b", _I), ()),
]  # fmt: skip
# "When did I last ...?": the day the note gives the statement answers it, as much as a day it names.
_PAST = re.compile(r"\bwhen\s+(?:did|was|were|had|have|has)\b|\b(?:day|date)\s+(?:did|was|were)\b", _I)

# A figure: 820, 1,600, 4.1, 6 (not the digits of a code such as LX-4471 or a version such as 1.2.3).
_FIGURE = r"(?<![\w.,/:-])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?!\d|[.,:]\d)"
_NUMBER_WORDS = (
    r"two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|"
    r"eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|thousand|dozen|half"
)
_NUMBER = rf"(?:{_FIGURE}|\b(?:{_NUMBER_WORDS})\b|\ba\s+(?:couple|few)\b|\b(?:an?|one)\b)"
_CLOCK_UNITS = r"(?:seconds?|secs?|s|minutes?|mins?|min|hours?|hrs?|h)\b"
_TIME_UNITS = r"(?:seconds?|secs?|minutes?|mins?|hours?|hrs?|h|days?|nights?|weeks?|months?|years?)\b"
_CLOCK = r"\b\d{1,2}:\d{2}(?::\d{2})?\b"
_PACE = r"\s*(?:per|/|a|an)\s*(?:km|kilomet\w*|mile\w*|lap|100\s*m)\b"
_COLOURS = (
    r"white|off-white|black|grey|gray|red|green|blue|yellow|orange|purple|pink|brown|beige|cream|ivory|navy|teal|"
    r"turquoise|olive|charcoal|silver|gold|golden|magenta|violet|lilac|maroon|burgundy|terracotta|ochre|sage|mint|"
    r"taupe|indigo|scarlet|crimson|emerald|amber|bronze|copper"
)
_CURRENCY = r"[€$£¥]|\b(?:euros?|eur|dollars?|usd|pounds?|gbp|cents?|pence|francs?|yen|reais|kr|sek|nok|dkk|chf)\b"
_MEASURE_UNITS = (
    r"(?:mm|cm|m|km|kg|g|mg|l|ml|cl|dl|litres?|liters?|metres?|meters?|millimet\w+|centimet\w+|kilomet\w+|inch(?:es)?|"
    r"in|feet|foot|ft|miles?|yards?|kwp|kwh|kw|w|watts?|bar|psi|%|per\s*cent|square\s+met\w+|m²|m2|sq\s*m|tonnes?|"
    r"lbs?|oz|ounces?|stones?)(?!\w)"
)

_VALUES: dict[str, re.Pattern[str]] = {
    COLOUR: re.compile(rf"(?<![\w-])(?:{_COLOURS})(?![\w-])", _I),
    TEMPERATURE: re.compile(rf"(?:{_FIGURE})\s*(?:°|º|degrees?\b|deg\b)|(?:{_FIGURE})\s?[CF]\b", _I),
    TIME: re.compile(rf"{_CLOCK}(?!{_PACE})|(?:{_FIGURE})\s*(?:am|pm|a\.m\.|p\.m\.|{_CLOCK_UNITS})|"
                     r"\b(?:half\s+past|quarter\s+(?:past|to)|noon|midday|midnight|o'clock)\b", _I),
    DURATION: re.compile(rf"{_CLOCK}(?!{_PACE})|{_NUMBER}(?:\s+|-)(?:and\s+a\s+half\s+)?{_TIME_UNITS}|"
                         r"\b(?:overnight|all\s+day|a\s+fortnight)\b", _I),
    MONEY: re.compile(_FIGURE),
    COUNT: re.compile(rf"{_FIGURE}|\b(?:{_NUMBER_WORDS}|once|twice|a\s+couple|several|none|no)\b", _I),
    FREQUENCY: re.compile(r"\b(?:once|twice|thrice|every|each|daily|weekly|monthly|yearly|annually|nightly|always|"
                          r"never|times\s+a|a\s+(?:day|week|month|year)|per\s+(?:day|week|month|year))\b", _I),
    MEASURE: re.compile(rf"(?:{_FIGURE})\s*(?:x\s*(?:{_FIGURE})\s*)?{_MEASURE_UNITS}", _I),
    AMOUNT: re.compile(_FIGURE),
}  # fmt: skip
_MONEY_NAMED = re.compile(_CURRENCY, _I)
# A day or month named in the text, or a day relative to the note's. A month or weekday is one only when capitalised,
# as prose writes it: "you may" names no month.
_DAY_NAMES = re.compile(rf"\b(?:{MONTH_NAMES}|(?:mon|tues|wednes|thurs|fri|satur|sun)days?)\b", _I)
_DATE_TEXT = re.compile(
    r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}/\d{2,4}\b|\b\d{1,2}(?:st|nd|rd|th)\b|"
    r"\b(?:today|tomorrow|yesterday|tonight)\b|"
    r"\b(?:next|last|this|coming)\s+(?:week(?:end)?|month|year|spring|summer|autumn|fall|winter)\b|"
    r"\b(?:spring|summer|autumn|fall|winter|in|by|until|since)\s+(?:19|20)\d{2}\b",
    _I,
)
# A name: a capitalised word after a lowercase word or a comma (not the sentence's first word, which any word may
# be), or two capitalised words anywhere ("Senhor Armando charged ..."); neither a month, a weekday, nor "I".
_NAME = re.compile(
    r"(?<=[a-z,;:(]\s)(?!(?:I|I'm|I've)\b)[A-Z][\w'\u2019-]*|\b(?!(?:I|The|A|An)\b)[A-Z][a-z\u00e0-\u00ff'-]+(?=\s+[A-Z][a-z])"
)
_NOT_NAMES = re.compile(rf"^(?:{MONTH_NAMES}|(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day)$", _I)


def slot_of(question: str) -> Slot | None:
    """What `question` asks for, or None when it asks for no kind of value (a how-to, a why, a yes or no)."""
    for kind, asked, cues in _ASKED:
        if asked.search(question):
            said = {word.lower() for word in re.findall(r"[^\W_]+", question)}
            return Slot(
                kind, frozenset(cue for cue in cues if cue in said), kind == DATE and bool(_PAST.search(question))
            )
    return None


def holds(slot: Slot, text: str, dated: bool = False) -> bool:
    """Whether `text` holds a value of the kind `slot` asks for; `dated`: its note or heading gives it a day."""
    if slot.kind == DATE:
        named = any(found[0][0].isupper() for found in _DAY_NAMES.finditer(text)) or bool(_DATE_TEXT.search(text))
        return named or (slot.dated_answers and dated)
    if slot.kind == PERSON:
        return any(not _NOT_NAMES.match(name) for name in _NAME.findall(text))
    if slot.kind == MONEY:
        return bool(_VALUES[MONEY].search(text)) and bool(_MONEY_NAMED.search(text))
    return bool(_VALUES[slot.kind].search(text))
