// The counters strip: sizes from the model, streams and revision from /v1/stats, and
// events per second (admin stream events, counted here) with a 60-second sparkline.

import { schedule } from "../frame.js";

const SECONDS = 60;

export class CountersView {
  constructor(root, model) {
    this.model = model;
    this.cells = {};
    for (const name of ["objects", "observers", "observations", "subscriptions", "streams", "revision", "rate"]) {
      this.cells[name] = root.querySelector(`#count-${name}`);
    }
    this.line = root.querySelector("#sparkline polyline");
    this.samples = new Array(SECONDS).fill(0);
    this.thisSecond = 0;
    this.stats = {};
    this.render = this.render.bind(this);
    for (const topic of ["topology", "observers", "reset"]) model.on(topic, () => schedule(this.render));
    setInterval(() => this.rollSecond(), 1000);
  }

  /** Counts one admin stream event. */
  count() {
    this.thisSecond += 1;
  }

  /** The latest /v1/stats answer. */
  update(stats) {
    this.stats = stats;
    schedule(this.render);
  }

  rollSecond() {
    this.samples.push(this.thisSecond);
    this.samples.shift();
    this.thisSecond = 0;
    schedule(this.render);
  }

  render() {
    const { model, cells } = this;
    cells.objects.textContent = model.objects.size;
    cells.observers.textContent = model.observers.size;
    cells.observations.textContent = model.observations.size;
    cells.subscriptions.textContent = model.subscriptions.size;
    cells.streams.textContent = this.stats.streams ?? "—";
    cells.revision.textContent = Math.max(model.revision, this.stats.revision ?? 0);
    cells.rate.textContent = this.samples[SECONDS - 1];
    const peak = Math.max(1, ...this.samples);
    const points = this.samples.map((value, index) => `${(index * 120) / (SECONDS - 1)},${27 - (value / peak) * 25}`);
    this.line.setAttribute("points", points.join(" "));
  }
}
