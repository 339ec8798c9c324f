-- GET with the benchmark key. The URL (path and query) comes from wrk's command line.
wrk.method = "GET"
wrk.headers["Authorization"] = "Bearer bench-key"
dofile("wrk/report.lua")
