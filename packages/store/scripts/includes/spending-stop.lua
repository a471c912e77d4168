-- spendingStop(payload, fields, rootKey, spendKey): spending against budgets. A budgeted task's tokens
-- and cost add up at its root (`spentTokens`, `spentMicroUsd`), and every commit of the tree, a claim
-- too, reads whether the root's budget is spent. With tenant limits (`payload.tenantLimits`, by tenant
-- or '*'), the tenant's spending adds up per UTC day in `spendKey`, a hash kept two days. Answers
-- 'budget', 'tenant_limit' or '0'.
local function spendingStop(payload, fields, rootKey, spendKey)
  local add = payload.add or {}
  local tokens = (add.promptTokens or 0) + (add.completionTokens or 0)
  local micro = add.costMicroUsd or 0
  local stop = '0'
  if fields.budgeted == '1' then
    if tokens > 0 then redis.call('HINCRBY', rootKey, 'spentTokens', tokens) end
    if micro > 0 then redis.call('HINCRBY', rootKey, 'spentMicroUsd', micro) end
    local budget = redis.call('HMGET', rootKey, 'budgetTokens', 'budgetMicroUsd', 'spentTokens', 'spentMicroUsd')
    local tokenBudget, usdBudget, spentTokens, spentMicroUsd = budget[1], budget[2], budget[3], budget[4]
    if (tokenBudget and tonumber(spentTokens or '0') >= tonumber(tokenBudget))
      or (usdBudget and tonumber(spentMicroUsd or '0') >= tonumber(usdBudget)) then
      stop = 'budget'
    end
  end
  local limit = payload.tenantLimits and (payload.tenantLimits[fields.tenant or 'default'] or payload.tenantLimits['*'])
  if limit then
    local created = false
    if tokens > 0 then created = redis.call('HINCRBY', spendKey, 'tokens', tokens) == tokens end
    if micro > 0 then created = (redis.call('HINCRBY', spendKey, 'microUsd', micro) == micro) or created end
    if created then redis.call('EXPIRE', spendKey, 172800) end
    local spent = redis.call('HMGET', spendKey, 'tokens', 'microUsd')
    -- With several cells, what the tenant spent in the others adds up (`payload.others`, tenant-totals.ts).
    local others = payload.others or {}
    if (limit.tokens and tonumber(spent[1] or '0') + (others.tokens or 0) >= limit.tokens)
      or (limit.microUsd and tonumber(spent[2] or '0') + (others.microUsd or 0) >= limit.microUsd) then
      stop = 'tenant_limit'
    end
  end
  return stop
end
