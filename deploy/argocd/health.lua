-- Argo CD health of every toolhive.stacklok.dev kind, as hivekeeper (and
-- ToolHive's operator) report it. Install it under the wildcard key
-- resource.customizations.health.toolhive.stacklok.dev_* of argocd-cm
-- (docs/install.md, "Argo CD").
--
-- A status that describes an older generation is Progressing whatever it
-- says. Workloads, groups, entries, EmbeddingServer and MCPRegistry read
-- status.phase; the config kinds read their Valid condition; a composite
-- tool definition its validationStatus.

local hs = { status = "Progressing", message = "Waiting for the controller to report a status" }
local st = obj.status
if st == nil then
  return hs
end

local generation = obj.metadata.generation
if generation ~= nil and st.observedGeneration ~= nil and st.observedGeneration < generation then
  hs.message = "Waiting for the controller to observe generation " .. generation
  return hs
end

local function condition(t)
  if st.conditions == nil then
    return nil
  end
  for _, c in ipairs(st.conditions) do
    if c.type == t then
      return c
    end
  end
  return nil
end

local function say(status, message)
  hs.status = status
  if message ~= nil and message ~= "" then
    hs.message = message
  else
    hs.message = status
  end
  return hs
end

-- The phase of each kind that has one, mapped to Argo CD's words.
local phases = {
  Ready = "Healthy",
  Valid = "Healthy", -- MCPServerEntry
  Pending = "Progressing",
  Downloading = "Progressing", -- EmbeddingServer
  Terminating = "Progressing",
  Degraded = "Degraded", -- VirtualMCPServer: serving, not as asked
  Failed = "Degraded",
  Stopped = "Suspended", -- MCPServer scaled to zero
}

local kind = obj.kind
if kind == "VirtualMCPCompositeToolDefinition" then
  local errors = ""
  if st.validationErrors ~= nil then
    errors = table.concat(st.validationErrors, "; ")
  end
  if st.validationStatus == "Valid" then
    return say("Healthy", "Valid")
  elseif st.validationStatus == "Invalid" then
    return say("Degraded", errors)
  end
  return hs
end

if st.phase ~= nil and st.phase ~= "" then
  local status = phases[st.phase]
  if status == nil then
    return say("Unknown", "Unknown phase " .. st.phase)
  end
  local message = st.message
  if message == nil or message == "" then
    local ready = condition("Ready")
    if ready ~= nil then
      message = ready.message
    end
  end
  if message == nil or message == "" then
    message = st.phase
  end
  return say(status, message)
end

-- The config kinds: MCPOIDCConfig, MCPToolConfig, MCPAuthzConfig,
-- MCPExternalAuthConfig, MCPTelemetryConfig, MCPWebhookConfig.
local valid = condition("Valid")
if valid ~= nil then
  if valid.status == "True" then
    return say("Healthy", valid.message)
  elseif valid.status == "False" then
    return say("Degraded", valid.message)
  end
end
return hs
