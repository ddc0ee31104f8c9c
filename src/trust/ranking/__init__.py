"""Ratings, judging and peer-ranked consensus (the pure core of the leaderboard and judge pools)."""
