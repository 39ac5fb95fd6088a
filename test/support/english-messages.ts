// Every function loads the handler engine, which sets zod's English messages (zod/mini leaves them
// to a locale). Tests that call the domain without a function load it too, so they see the same words.
import '../../shared/handler/engine';
