"""Verdicts: pure statistics and the one judge used by runs, saved-run compare and studies. No torch,
no pytest.
"""
