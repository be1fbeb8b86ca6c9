const m = () => { const u = process.memoryUsage(); return `rss ${(u.rss/1e6).toFixed(1)} heap ${(u.heapUsed/1e6).toFixed(1)} ext ${(u.external/1e6).toFixed(1)}`; };
console.log('base', m());
for (const mod of process.argv.slice(2)) { const t = Date.now(); await import(mod); globalThis.gc?.(); console.log(mod.replace('/work/wt-i14-entropy/dist/src/', ''), m(), `${Date.now()-t}ms`); }
