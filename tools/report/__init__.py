"""`make report`: the contest's report from the bot's audit entries in Cloud Logging (issue 28, item 5)."""
