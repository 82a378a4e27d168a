-- GET /v1/objects/o<i>/values/name, cycling over 1,000 objects.
local i = 0
request = function()
  i = i + 1
  return wrk.format("GET", "/v1/objects/o" .. (i % 1000) .. "/values/name")
end
