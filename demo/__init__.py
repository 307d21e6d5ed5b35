"""`make demo`: the bot's main job on the local stack, as a transcript a person can follow."""
