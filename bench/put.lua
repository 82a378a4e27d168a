-- PUT /v1/objects/o<i>/values/name with a small JSON value, cycling over 1,000 objects; with
-- OBS_BENCH_TOKEN set, each request presents it (`Authorization: Bearer`, bench/scoped.py).
local i = 0
local headers = { ["Content-Type"] = "application/json" }
local token = os.getenv("OBS_BENCH_TOKEN")
if token and token ~= "" then headers["Authorization"] = "Bearer " .. token end
request = function()
  i = i + 1
  local body = '{"value":{"name":"name-' .. i .. '","seq":' .. i .. '}}'
  return wrk.format("PUT", "/v1/objects/o" .. (i % 1000) .. "/values/name", headers, body)
end

response = function(status)
  if status ~= 200 then wrk.thread:set("bad", (wrk.thread:get("bad") or 0) + 1) end
end
