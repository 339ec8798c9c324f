-- Shared by the scenario scripts (dofile'd; wrk runs with test/bench as its working directory).
-- Prints one line "BENCH_JSON {...}" at the end with the counts and latency percentiles (µs).
-- With BENCH_EXPECT=<status> set, every response's status is compared with it and the
-- others are counted (this costs wrk a Lua call per response, so it is only turned on for
-- scenarios whose expected status is not 2xx: for 2xx wrk's own non-2xx count is exact).

local expect = tonumber(os.getenv("BENCH_EXPECT") or "")
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

if expect then
  unexpected = 0
  function response(status, headers, body)
    if status ~= expect then unexpected = unexpected + 1 end
  end
end

function done(summary, latency, requests)
  local unexpected_total = 0
  for _, t in ipairs(threads) do
    unexpected_total = unexpected_total + (t:get("unexpected") or 0)
  end
  local e = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"duration_us":%d,"connect":%d,"read":%d,"write":%d,"timeout":%d,' ..
    '"non2xx":%d,"unexpected":%s,"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d}\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.timeout, e.status,
    expect and tostring(unexpected_total) or "null",
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end
