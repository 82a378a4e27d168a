-- bench/put.lua with `Authorization: Bearer $OBS_BENCH_TOKEN` (bench/scoped.py: W1 with a token).
local i = 0
local headers = {
  ["Content-Type"] = "application/json",
  ["Authorization"] = "Bearer " .. (os.getenv("OBS_BENCH_TOKEN") or ""),
}
request = function()
  i = i + 1
  local body = '{"value":{"name":"name-' .. i .. '","seq":' .. i .. '}}'
  return wrk.format("PUT", "/v1/objects/o" .. (i % 1000) .. "/values/name", headers, body)
end

response = function(status)
  if status ~= 200 then wrk.thread:set("bad", (wrk.thread:get("bad") or 0) + 1) end
end
