"""Sources and ladders: where a source video comes from (`source`, `stand_in`), encoding it into
a bitstream plus its trace (`encode`, `audio`), the DASH and MPEG-2 ladders (`dash`,
`mpeg2_ladder`), and the recipes of the bundled traces (`bundle`, `bundle_more`).

Builds on `traces` and `pictures`; nothing here knows about receivers or quality judgements.
"""
