-- W7 (issue 43): POST /v1/transactions of OBS_TX_OPS (default 4) `set`s of `name` on distinct random
-- objects of o0..o999, each value as put.lua's; OBS_TX_OPS=1 is the one-operation transaction.
local i = 0
local ops = tonumber(os.getenv("OBS_TX_OPS") or "4")
local headers = { ["Content-Type"] = "application/json" }
math.randomseed(43)
request = function()
  local parts, used = {}, {}
  while #parts < ops do
    local o = math.random(0, 999)
    if not used[o] then
      used[o] = true
      i = i + 1
      parts[#parts + 1] = '{"op":"set","object":"o' .. o .. '","keyPath":"name","value":{"name":"name-' .. i ..
        '","seq":' .. i .. '}}'
    end
  end
  return wrk.format("POST", "/v1/transactions", headers, '{"operations":[' .. table.concat(parts, ",") .. ']}')
end

response = function(status)
  if status ~= 200 then wrk.thread:set("bad", (wrk.thread:get("bad") or 0) + 1) end
end
