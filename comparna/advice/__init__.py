"""The advisor (issue 40): from a user's sequence to the benchmark's evidence for RNAs like it, and the
best methods of that evidence run on it. Requests are private (an unguessable link, deleted after 7 days);
their sequences never enter a benchmark, a snapshot or a log line."""
