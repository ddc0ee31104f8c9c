"""The one maths engine: the no-`eval` arithmetic parser with exact fractions and abuse limits
(`expressions`) and what is built on it: the calculation finder (`calculations`), the text
clean-up it and the checks share (`text`), the rounding rule (`rounding`) and the evaluation of an
operation's expression (`arithmetic`)."""

__all__: list[str] = []
