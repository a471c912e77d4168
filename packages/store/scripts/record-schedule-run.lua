-- RECORD SCHEDULE RUN: what a firing did (schedule-store.ts, recordRun), kept only while the schedule
-- is (a firing that raced its delete leaves nothing behind). KEYS: the record, its runs. ARGV: the run
-- (JSON), how many runs are kept, the task it submitted ('' for none), and why the schedule is now
-- paused ('' to leave it as it is: a pause is a change of the record, its next revision). Answers 1, or
-- 0 when the schedule was gone.
if redis.call('EXISTS', scheduleKey) == 0 then return 0 end
redis.call('LPUSH', runsKey, runJson)
redis.call('LTRIM', runsKey, 0, tonumber(keptRuns) - 1)
if taskId ~= '' then redis.call('HSET', scheduleKey, 'lastTaskId', taskId) end
if pausedReason ~= '' then
  redis.call('HSET', scheduleKey, 'paused', 'true', 'pausedReason', pausedReason)
  redis.call('HINCRBY', scheduleKey, 'revision', 1)
end
return 1
