"""The rules: pure mechanisms over the records — routing, the ledger and the veto,
dispositions, authority, answers, recovery, budgets, the effect journal and memory.

They read and append through the store, but start no process, touch no git and keep no clock
of their own. They import only the protocol, the store and the policy below them.
"""
