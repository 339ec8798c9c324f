-- POST /v1/pets with the benchmark key and a valid NewPet.
wrk.method = "POST"
wrk.headers["Authorization"] = "Bearer bench-key"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"name":"bench-pet","categoryId":3,"status":"available"}'
dofile("wrk/report.lua")
