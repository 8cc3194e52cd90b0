"""The operator's view: what an operator reads of a prover or an agent, and the one home of the word "status".

  metrics    the Prometheus series: ``ProverMetrics`` (what a prover records: the agent's and the cuzk
             server's) and ``AgentMetrics`` (the provider's on top); the prover half of the status document
  exporter   the listener on ``metrics.listen``: ``/metrics``, ``/status`` and the status page at ``/``
  gate       the readiness gate as shown to operators, and its file (the service writes it, the report
             reads it)
  progress   long work that says how long: stage events to a line at a cadence, and the running stage for
             the status document
  document   the status document (``/status``): the running agent's view, built from its metrics and store
  page       the status page (``/``): the status document as one HTML page
  report     the status report (``psagent status``): another process's view, from the store and the gate file

"Status" names three things, each with its own name here:

* the **status document**, ``/status`` (``document.StatusView``), and the **status page** ``/`` that renders
  it: served by the running agent, lifetime figures from the store, the rest from its metrics;
* the **status report**, ``psagent status`` (``report.status_report``): read by another process from the
  store and the gate file, so it works whether or not an agent runs;
* **GetStatus**, the cuzk server's RPC (``cuzk.v1.ProvingEngine/GetStatus``, answered by
  ``agent.cuzk.server``): Curio's call, whose shape (devices, loaded parameters, queues, totals, uptime) the
  status document borrows.

Nothing here imports the proving wing or the service: the prover records into ``metrics`` and ``progress``,
the service publishes its gate through ``gate``; the listener knows nothing of what it serves. Import from
the modules.
"""
