-- POST /v1/pets with the benchmark key and a new Idempotency-Key on every request (a first use):
-- the thread's id and a counter, so no two requests of a run share a key.
wrk.method = "POST"
wrk.headers["Authorization"] = "Bearer bench-key"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"name":"bench-pet","categoryId":3,"status":"available"}'
local prefix = tostring(os.time()) .. "-" .. tostring(math.random(1, 1e9)) .. "-"
local n = 0
function request()
  n = n + 1
  wrk.headers["Idempotency-Key"] = prefix .. n
  return wrk.format()
end
dofile("wrk/report.lua")
