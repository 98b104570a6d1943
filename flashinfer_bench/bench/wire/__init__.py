"""Everything that crosses a process boundary, defined once: parent <-> judge (``parent_judge``: work items and
outcomes, trusted pickles between trusted processes) and judge <-> worker (``judge_worker``: JSON schemas in both
directions), and what a timing loop claims (``claims``) or a call's failure says (``failures``)."""
