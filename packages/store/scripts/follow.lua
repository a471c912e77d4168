-- FOLLOW: a task is followed from now on (event-hub.ts): its commits publish their events, which the
-- commits of a task nobody ever followed do not (one command a commit, for most tasks of a batch).
-- KEYS: the task's record. Marks it only if it exists (a follow of a task removed meanwhile leaves no
-- record behind).
if redis.call('EXISTS', taskKey) == 1 then redis.call('HSET', taskKey, 'followed', '1') end
return 1
