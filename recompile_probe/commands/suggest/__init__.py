"""`suggest`: run.py (the flow), discover.py (the dims that vary), objective.py (the ranking),
bench.py (measuring candidates), search.py (exhaustive or greedy), forms.py (the advice's
forms, measured), write.py (--write)."""
