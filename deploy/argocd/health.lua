-- Argo CD health check for kafkahealth.io/KafkaHealthPolicy (Lua 5.1, as Argo CD runs it).
-- Install: argocd-cm key resource.customizations.health.kafkahealth.io_KafkaHealthPolicy
-- (docs/gitops.md). Reads only the status contract: conditions Ready, Healthy, Degraded,
-- Remediating; status.observedGeneration, status.health, status.pendingPlan; and
-- spec.remediation.paused. In order, the first that applies wins:
--   no conditions yet, or the spec generation not yet observed  -> Progressing
--   Degraded=True (the policy cannot do its job)                 -> Degraded
--   spec.remediation.paused                                      -> Suspended
--   Remediating=True (an action in flight)                       -> Progressing
--   status.pendingPlan (a plan waits for approval)               -> Suspended
--   Ready not True, or Healthy missing/Unknown                   -> Progressing
--   Healthy=False and status.health Critical                     -> Degraded
--   otherwise (Healthy=True, or only warnings)                   -> Healthy
local hs = {}

local function find_condition(status, wanted)
  if status == nil or status.conditions == nil then
    return nil
  end
  for _, c in ipairs(status.conditions) do
    if c.type == wanted then
      return c
    end
  end
  return nil
end

local function is_true(c)
  return c ~= nil and c.status == "True"
end

-- "Reason: message", or the fallback when the condition says nothing.
local function describe(c, fallback)
  if c == nil then
    return fallback
  end
  local text = c.message
  if text == nil or text == "" then
    text = fallback
  end
  if c.reason ~= nil and c.reason ~= "" then
    return c.reason .. ": " .. text
  end
  return text
end

local status = obj.status
local spec = obj.spec or {}
local remediation = spec.remediation or {}
local metadata = obj.metadata or {}

if status == nil or status.conditions == nil or #status.conditions == 0 then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to report status"
  return hs
end

if metadata.generation ~= nil and status.observedGeneration ~= nil
    and status.observedGeneration < metadata.generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to observe generation " .. tostring(metadata.generation)
    .. " (observed " .. tostring(status.observedGeneration) .. ")"
  return hs
end

local degraded = find_condition(status, "Degraded")
if is_true(degraded) then
  hs.status = "Degraded"
  hs.message = describe(degraded, "The policy cannot do its job")
  return hs
end

local remediating = find_condition(status, "Remediating")
if remediation.paused == true then
  hs.status = "Suspended"
  hs.message = "Remediation paused (spec.remediation.paused)"
  if is_true(remediating) then
    hs.message = hs.message .. "; in flight: " .. describe(remediating, "an action")
  end
  return hs
end

if is_true(remediating) then
  hs.status = "Progressing"
  local summary = status.remediationSummary
  if summary == nil or summary == "" then
    summary = "an action is in flight"
  end
  hs.message = describe(remediating, summary)
  return hs
end

local plan = status.pendingPlan
if plan ~= nil then
  hs.status = "Suspended"
  local what = plan.summary or plan.action or "a plan"
  hs.message = "Plan " .. tostring(plan.planId) .. " awaits approval: " .. what
  return hs
end

local ready = find_condition(status, "Ready")
if not is_true(ready) then
  hs.status = "Progressing"
  hs.message = describe(ready, "Waiting for the first diagnosis")
  return hs
end

local healthy = find_condition(status, "Healthy")
if healthy == nil or (healthy.status ~= "True" and healthy.status ~= "False") then
  hs.status = "Progressing"
  hs.message = describe(healthy, "Waiting for the first diagnosis")
  return hs
end

if healthy.status == "False" and status.health == "Critical" then
  hs.status = "Degraded"
  hs.message = describe(healthy, "The Kafka cluster has critical findings")
  return hs
end

hs.status = "Healthy"
hs.message = describe(healthy, "The Kafka cluster is healthy")
return hs
