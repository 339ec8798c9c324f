-- POST /v1/pets with the benchmark key and Idempotency-Keys replay-0 .. replay-999 in turn,
-- made beforehand with this payload: every request is a replay of its key's pet (the same
-- 201). A thousand keys, so that two of the 64 connections seldom repeat one key at once
-- (that would be a 409 within one process).
wrk.method = "POST"
wrk.headers["Authorization"] = "Bearer bench-key"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"name":"bench-pet","categoryId":3,"status":"available"}'
local n = 0
function request()
  wrk.headers["Idempotency-Key"] = "replay-" .. (n % 1000)
  n = n + 1
  return wrk.format()
end
dofile("wrk/report.lua")
