// Calls IUserService (samples/Mux.Samples.Contracts) through the Mux endpoint of the page's own
// server with the TypeScript client. A method is named as docs/protocol.md hashes it.
import { MuxClient } from "./mux-rpc.js";

const service = "Mux.Samples.Contracts.IUserService";
const $ = (id) => document.getElementById(id);
const showError = (error) => { $("error").textContent = `${error.name}: ${error.message}`; };

const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/mux`;
let client;
try {
  client = await MuxClient.connect(url, { timeoutMs: 5000 });
} catch (error) {
  $("state").textContent = "failed";
  showError(error);
  throw error;
}

$("state").textContent = "connected";
client.onStateChange = (state) => { $("state").textContent = state; };
$("add").disabled = false;
$("list").disabled = false;

$("add").addEventListener("click", async () => {
  $("error").textContent = "";
  try {
    const sum = await client.call(`${service}.Add`, [Number($("a").value), Number($("b").value)]);
    $("sum").textContent = String(sum);
  } catch (error) {
    showError(error);
  }
});

$("list").addEventListener("click", async () => {
  $("error").textContent = "";
  try {
    // A User is a MessagePack array: [ID, Name, City, EMail, Remark] (its [Key] order).
    const users = await client.call(`${service}.List`, [Number($("count").value)]);
    const rows = users.map(([id, name, city, email]) => `<tr><td>${id}</td><td>${name}</td><td>${city}</td><td>${email}</td></tr>`);
    $("users").innerHTML = `<table><tr><th>ID</th><th>Name</th><th>City</th><th>EMail</th></tr>${rows.join("")}</table>`;
  } catch (error) {
    showError(error);
  }
});

// For scripts that drive the page (a headless browser): the results of one Add and one List.
window.muxSample = {
  add: (a, b) => client.call(`${service}.Add`, [a, b]),
  list: (count) => client.call(`${service}.List`, [count]),
};
